"""
Drives a live service through one of the PyPI clients our users already have, used exactly as they
use it: `everysk` 1.0.17 (legacy) or `everysk-lib` (current). Both install the module `everysk`, so
each runs from its own virtualenv. Prints one JSON line per scenario: {"name", "ok", "detail"}.

The service's address and credentials come from the environment, as a user would configure them:
EVERYSK_API_URL (everysk-lib) or EVERYSK_API_ENTRY (everysk 1.0.17), EVERYSK_API_SID, EVERYSK_API_TOKEN.
PAS_CLIENT says which client is installed; PAS_WORKFLOW_OK and PAS_WORKFLOW_FAIL name two stored workflows.
"""
import base64
import json
import os

from scenario_kit import CLIENT, WORKSPACE, check, finish, scenario

if CLIENT == 'legacy':
    import everysk as api
    from everysk.api_requestor import APIError
else:
    from everysk import api
    from everysk.core.exceptions import APIError
    from everysk.sdk.entities.workflow_execution.polling import WorkflowExecutionFailed


def crud(resource, create_kwargs, modify_kwargs, key='id', check_fields=('name',)):
    """create, retrieve, modify, list, auto_paging_iter and remove through the client."""
    created = resource.create(workspace=WORKSPACE, **create_kwargs)
    ident = created[key]
    for field in check_fields:
        check(created[field] == create_kwargs[field], '%s: created %s' % (resource.__name__, field))
    retrieved = resource.retrieve(ident, workspace=WORKSPACE)
    check(retrieved[key] == ident, '%s: retrieve' % resource.__name__)
    modified = resource.modify(ident, workspace=WORKSPACE, **modify_kwargs)
    for field, value in modify_kwargs.items():
        if field in check_fields:
            check(modified[field] == value, '%s: modified %s' % (resource.__name__, field))
    listed = resource.list(workspace=WORKSPACE, page_size=1)
    check(len(listed) == 1, '%s: list page_size=1' % resource.__name__)
    every = [item[key] for item in resource.auto_paging_iter(workspace=WORKSPACE, page_size=1)]
    check(ident in every, '%s: auto_paging_iter found the new entity' % resource.__name__)
    check(len(every) == len(set(every)), '%s: auto_paging_iter repeated an entity' % resource.__name__)
    removed = resource.remove(ident, workspace=WORKSPACE)
    check(removed['deleted'] is True, '%s: remove' % resource.__name__)
    try:
        resource.retrieve(ident, workspace=WORKSPACE)
        raise AssertionError('%s: still there after remove' % resource.__name__)
    except APIError as error:
        check(error_body(error)['code'] == 404, '%s: 404 after remove' % resource.__name__)
    return {'id': ident, 'listed': len(every)}


def error_body(error):
    text = str(error)
    return json.loads(text)


@scenario
def workspace_crud():
    name = 'clientws%d' % os.getpid()
    created = api.Workspace.create(name=name, description='made by a client')
    check(created['name'] == name, 'workspace create')
    check(api.Workspace.retrieve(name)['name'] == name, 'workspace retrieve')
    modified = api.Workspace.modify(name, name=name, description='changed')
    check(modified['description'] == 'changed', 'workspace modify')
    names = [w['name'] for w in api.Workspace.auto_paging_iter(page_size=1)]
    check(name in names, 'workspace auto_paging_iter')
    removed = api.Workspace.remove(name)
    check(removed['deleted'] is True and removed['name'] == name, 'workspace remove')
    return {'workspaces': len(names)}


@scenario
def portfolio_crud():
    securities = [
        {'id': 'p1', 'symbol': 'AAPL', 'quantity': 100},
        {'id': 'p2', 'symbol': 'JPM', 'quantity': 50},
    ]
    return crud(
        api.Portfolio,
        {'name': 'Client book', 'description': 'made by a client #clients', 'securities': securities, 'date': '20221228'},
        {'name': 'Client book renamed'},
    )


@scenario
def datastore_crud():
    return crud(
        api.Datastore,
        {'name': 'Client table', 'description': 'rows', 'data': [['a', 'b'], [1, 2]], 'date': '20221228'},
        {'name': 'Client table 2', 'data': [['a'], [3]]},
    )


@scenario
def file_base64_round_trip():
    content = 'symbol,quantity\nAAPL,100\n\u00e9t\u00e9\n'.encode('utf-8') + bytes(range(256))
    encoded = base64.b64encode(content).decode('ascii')
    created = api.File.create(
        workspace=WORKSPACE,
        name='client.csv',
        description='bytes',
        content_type='application/octet-stream',
        data=encoded,
    )
    retrieved = api.File.retrieve(created['id'], workspace=WORKSPACE)
    check(base64.b64decode(retrieved['data']) == content, 'file bytes survive the round trip')
    modified = api.File.modify(
        created['id'],
        workspace=WORKSPACE,
        name='client2.csv',
        description='bytes 2',
        content_type='text/csv',
        data=base64.b64encode(b'x,y\n1,2\n').decode('ascii'),
    )
    check(modified['name'] == 'client2.csv', 'file modify')
    every = [f['id'] for f in api.File.auto_paging_iter(workspace=WORKSPACE, page_size=1)]
    check(created['id'] in every, 'file auto_paging_iter')
    removed = api.File.remove(created['id'], workspace=WORKSPACE)
    check(removed['deleted'] is True, 'file remove')
    return {'bytes': len(content)}


@scenario
def custom_index_crud():
    symbol = 'CUSTOM:CLIENT%d' % os.getpid()
    return crud(
        api.CustomIndex,
        {'symbol': symbol, 'name': 'Client index', 'data': [['20221227', 1.0], ['20221228', 1.01]]},
        {'name': 'Client index 2', 'data': [['20221228', 1.02]]},
        key='symbol',
    )


@scenario
def private_security_crud():
    symbol = 'PRIVATE:CLIENT%d' % os.getpid()
    return crud(
        api.PrivateSecurity,
        {'symbol': symbol, 'name': 'Client security', 'type': 'EQUITY', 'data': {'price': 10}},
        {'name': 'Client security 2'},
        key='symbol',
    )


@scenario
def report_share_and_remove():
    report_id = os.environ['PAS_REPORT_ID']
    report = api.Report.retrieve(report_id, workspace=WORKSPACE)
    check(report['id'] == report_id, 'report retrieve')
    renamed = api.Report.modify(report_id, workspace=WORKSPACE, name='Client report renamed')
    check(renamed['name'] == 'Client report renamed', 'report modify')
    shared = report.share(workspace=WORKSPACE)
    check(shared['shared_url'].startswith('http'), 'report share gives a shared_url')
    listed = [r['id'] for r in api.Report.auto_paging_iter(workspace=WORKSPACE, page_size=1)]
    check(report_id in listed, 'report auto_paging_iter')
    removed = api.Report.remove(report_id, workspace=WORKSPACE)
    check(removed['deleted'] is True, 'report remove')
    return {'shared_url': shared['shared_url'].split('?')[0]}


@scenario
def workflows_listed_and_retrieved():
    ids = [w['id'] for w in api.Workflow.auto_paging_iter(workspace=WORKSPACE, page_size=1)]
    check(os.environ['PAS_WORKFLOW_OK'] in ids, 'workflow auto_paging_iter')
    workflow = api.Workflow.retrieve(os.environ['PAS_WORKFLOW_OK'], workspace=WORKSPACE)
    check([w['type'] for w in workflow['workers']] == ['STARTER', 'ENDER'], 'workflow retrieve with workers')
    return {'workflows': len(ids)}


BOOK = [
    {'id': 'p1', 'symbol': 'AAPL', 'quantity': 100},
    {'id': 'p2', 'symbol': 'JPM', 'quantity': 200},
]


@scenario
def stress_test():
    response = api.Calculation.stressTest(securities=BOOK, date='20221228', magnitude=-0.1)
    result = response['stress_test']
    check([r['id'] for r in result['results']] == ['p1', 'p2'], 'stress test results per position')
    ev = sum(v['value'] for r in result['results'] for v in r['ev'])
    check(ev < 0, 'a -10% shock loses money on a long book')
    return {'ev': ev}


@scenario
def risk_attribution():
    response = api.Calculation.riskAttribution(securities=BOOK, date='20221228', risk_measure='vol')
    result = response['risk_attribution']
    vol = sum(v['value'] for r in result['results'] for v in r['mctr'])
    check(0 < vol < 1, 'annualised volatility of a stock book is between 0 and 1')
    return {'vol': vol}


OPTION = {'id': 'c1', 'symbol': 'AAPL 20230317 C130', 'quantity': 5, 'market_price': 9.5}


def close(a, b, tolerance=1e-9):
    return abs(a - b) <= tolerance * max(1.0, abs(b))


@scenario
def exposure():
    response = api.Calculation.exposure(securities=BOOK + [OPTION], date='20221228', aggregation='position')
    result = response['exposure']
    check([r['id'] for r in result['results']] == ['p1', 'p2', 'c1'], 'exposure per position')
    check(close(result['net'], sum(r['exposure'] for r in result['results'])), 'net is the sum of exposures')
    option = result['results'][2]
    check(option['delta_notional'] > option['notional'] > 0, 'a call exposes more than its premium')
    return {'net': result['net'], 'gross': result['gross']}


@scenario
def parametric_risk_attribution():
    response = api.Calculation.parametricRiskAttribution(
        securities=BOOK, date='20221228', projection=['IND:SPX'], confidence='99%', use_cashflow=True
    )
    result = response['parametric_risk_attribution']
    total = sum(v['value'] for r in result['results'] for v in r['volatility'])
    check(0 < result['volatility'] < 1 and close(total, result['volatility']), 'Euler parts sum to the vol')
    vol = api.Calculation.riskAttribution(securities=BOOK, date='20221228', risk_measure='vol')['risk_attribution']
    check(close(result['volatility'], sum(v['value'] for r in vol['results'] for v in r['mctr'])), 'vol = risk_attribution vol')
    check(result['var'] < 0 and result['cvar'] < result['var'], 'losses are negative, cvar beyond var')
    return {'volatility': result['volatility'], 'var': result['var']}


@scenario
def sensitivity():
    response = api.Calculation.sensitivity(
        securities=BOOK + [OPTION], date='20221228', sensitivity_type='delta', compute_notional=True
    )
    result = response['sensitivity']
    check(close(result['total'], sum(r['value'] for r in result['results'])), 'total of the notionals')
    unit = api.Calculation.sensitivity(securities=[OPTION], date='20221228', sensitivity_type='gamma')['sensitivity']
    check(unit['total'] is None and unit['results'][0]['value'] > 0, 'per-unit gamma, no total')
    return {'delta': result['total']}


@scenario
def underlying_stress_sensitivity():
    body = {'securities': BOOK, 'date': '20221228', 'stress_values': [-0.1, 0, 0.1]}
    if CLIENT == 'legacy':
        # everysk 1.0.17 has no method for it: the client's own requestor posts it, as its methods do.
        from everysk import utils

        response = utils.create_api_requestor(body).post('/calculations/underlying_stress_sensitivity', body)
    else:
        response = api.Calculation.underlying_stress_sensitivity(**body)
    result = response['underlying_stress_sensitivity']
    total = {t['stress']: t['value'] for t in result['total']}
    check(total[0] == 0 and close(total[0.1], 0.1) and close(total[-0.1], -0.1), 'a long stock book moves 1:1')
    return {'total': result['total']}


@scenario
def properties():
    response = api.Calculation.properties(securities=BOOK, date='20221228', horizon=5, confidence='95%')
    result = response['properties']
    check(close(result['net'], 1) and close(result['delta'], result['nlv']), 'a long stock book is all delta')
    check(0 < result['volatility'] < 1 and result['cvar'] < result['var'] < 0, 'risk figures')
    return {'volatility': result['volatility'], 'var': result['var']}


@scenario
def marginal_tracking_error():
    response = api.Calculation.marginalTrackingError(
        portfolio1={'securities': BOOK, 'date': '20221228'},
        portfolio2={'securities': [{'id': 'b1', 'symbol': 'AAPL', 'quantity': 10}]},
        EWMA=True,
        exponential_decay=0.97,
    )
    result = response['marginal_tracking_error']
    check(result['date'] == '20221228' and result['observations'] == 252, 'window up to the date')
    check([r['id'] for r in result['results']] == ['p1', 'p2'], 'one row per symbol, portfolio1 first')
    check(close(sum(r['cte'] for r in result['results']), result['te'], 1e-12), 'contributions sum to te')
    check(0 < result['te'] < 1, 'a plausible tracking error')
    return {'te': result['te']}


@scenario
def backtest():
    response = api.Calculation.backtest(
        securities=BOOK,
        date='20221228',
        backtest_date1='2022-01-03',
        backtest_date2='2022-12-28',
        backtest_periodicity='monthly',
        backtest_benchmark_ticker='IND:SPX',
        output_type='full',
    )
    result = response['backtest']
    check(result['start'] == '20220103' and result['end'] == '20221228', 'the range as sent (YYYY-MM-DD)')
    check(result['periods'] == 12 and len(result['series']['returns']) == 12, 'twelve monthly periods')
    check(result['series']['portfolio'][0] == 100, 'indexed to 100')
    check(result['statistics']['beta'] is not None and result['statistics']['max_drawdown'] <= 0, 'statistics')
    return {'total_return': result['statistics']['total_return']}


@scenario
def backtest_statistics():
    response = api.Calculation.backtestStatistics(
        securities=BOOK, date='20221228', backtest_date1='20220103', backtest_periodicity='weekly'
    )
    result = response['backtest_statistics']
    check('series' not in result and result['periodicity'] == 'weekly', 'summary by default, weekly')
    check(result['statistics']['benchmark'] is not None, 'against IND:SPX by default')
    return {'sharpe': result['statistics']['sharpe']}


@scenario
def api_error_bodies():
    try:
        api.Portfolio.retrieve('port_' + 'x' * 25, workspace=WORKSPACE)
        raise AssertionError('retrieve of a missing portfolio did not fail')
    except APIError as error:
        body = error_body(error)
        check(body['code'] == 404 and isinstance(body['message'], str), '404 body is {code, message}')
    try:
        api.Portfolio.create(workspace=WORKSPACE, name='no securities')
        raise AssertionError('create without securities did not fail')
    except APIError as error:
        body = error_body(error)
        check(body['code'] == 400 and 'securities' in body['message'], '400 body names the field')
    return {}


@scenario
def workflow_success():
    workflow_id = os.environ['PAS_WORKFLOW_OK']
    if CLIENT == 'legacy':
        execution = api.Workflow.run(workflow_id, parameters={'amount': 21}, workspace=WORKSPACE)
        check(execution['status'] == 'OK', 'a new run carries the legacy status OK')
        ender = api.WorkflowExecution.syncronous_retrieve(
            workflow_id, workflow_execution_id=execution['id'], workspace=WORKSPACE
        )
    else:
        ender = api.Workflow.run_and_wait(
            workflow_id, parameters={'amount': 21}, workspace=WORKSPACE, poll_interval=0.2, timeout=120
        )
    check(ender['result'] == {'doubled': 42}, 'the Ender result is the business output: %r' % (ender['result'],))
    return {'result': ender['result']}


@scenario
def workflow_failure():
    workflow_id = os.environ['PAS_WORKFLOW_FAIL']
    if CLIENT == 'legacy':
        execution = api.Workflow.run(workflow_id, parameters={}, workspace=WORKSPACE)
        ender = api.WorkflowExecution.syncronous_retrieve(
            workflow_id, workflow_execution_id=execution['id'], workspace=WORKSPACE
        )
        final = api.WorkflowExecution.retrieve(
            workflow_id, workflow_execution_id=execution['id'], workspace=WORKSPACE
        )
        check(final['run_status'] == 'FAILED', 'the failed run reads FAILED')
        return {'ender_status': ender['status']}
    try:
        api.Workflow.run_and_wait(workflow_id, parameters={}, workspace=WORKSPACE, poll_interval=0.2, timeout=120)
    except WorkflowExecutionFailed as error:
        return {'raised': str(error)[:200]}
    raise AssertionError('run_and_wait of a failing workflow did not raise WorkflowExecutionFailed')


finish()
