"""
everysk-lib's SDK layer (`everysk.sdk`, POST /v1/sdk_function), written as its documentation teaches:
entity objects and their class methods, Query, Workflow.run_and_wait, MarketData, UserCache, UserLock.
Runs with everysk-lib only (everysk 1.0.17 has no SDK layer), in a virtualenv with httpx, which the
SDK layer needs. The suite stores AAPL, JPM and IND:SPX prices and the workflow PAS_WORKFLOW_OK.
"""
import os

from scenario_kit import WORKSPACE, check, finish, scenario

from everysk.core.exceptions import SDKError
from everysk.sdk.engines.cache import UserCache
from everysk.sdk.engines.lock import UserLock
from everysk.sdk.engines.market_data import MarketData
from everysk.sdk.entities.custom_index.base import CustomIndex
from everysk.sdk.entities.datastore.base import Datastore
from everysk.sdk.entities.portfolio.base import Portfolio
from everysk.sdk.entities.private_security.base import PrivateSecurity
from everysk.sdk.entities.query import Query
from everysk.sdk.entities.workflow.base import Workflow

TAG = 'sdk%d' % os.getpid()
SECURITIES = [{'id': 'p1', 'symbol': 'AAPL', 'quantity': 100}, {'id': 'p2', 'symbol': 'JPM', 'quantity': 50}]


def expect_error(call):
    """The call fails with the service's {error_message, error_module} body; answers the message."""
    try:
        call()
    except SDKError as error:
        text = str(error)
        check('error_message' in text and 'error_module' in text, 'an SDK error body: %s' % text)
        return text
    raise AssertionError('the call did not fail')


@scenario
def portfolio_entity_lifecycle():
    portfolio = Portfolio(name='SDK book', workspace=WORKSPACE, date='20221228', securities=SECURITIES, tags=[TAG])
    check(portfolio.validate() is True, 'validate')
    saved = portfolio.save()
    check(saved.id.startswith('port_') and saved.name == 'SDK book', 'save creates: %r' % saved.id)
    check(len(saved.securities) == 2 and saved.securities[0].symbol == 'AAPL', 'securities come back')
    fetched = Portfolio.retrieve(saved.id)
    check(fetched.id == saved.id and fetched.workspace == WORKSPACE, 'retrieve by id alone')
    check(fetched.created_on is not None and fetched.created_on.year >= 2024, 'created_on is a date-time')
    fetched.name = 'SDK book renamed'
    check(fetched.save().name == 'SDK book renamed', 'save updates')
    modified = Portfolio.modify(saved.id, {'description': 'changed'})
    check(modified.description == 'changed' and modified.name == 'SDK book renamed', 'modify')
    cloned = Portfolio.clone(saved.id, {'name': 'SDK clone'})
    check(cloned.id != saved.id and cloned.name == 'SDK clone' and len(cloned.securities) == 2, 'clone')
    many = Portfolio.retrieve_many([saved.id, cloned.id, 'port_' + 'x' * 25])
    check([p.id if p else None for p in many] == [saved.id, cloned.id, None], 'retrieve_many, None for unknown')
    check(Portfolio.retrieve('port_' + 'y' * 25) is None, 'retrieve of an unknown id is None')
    removed = Portfolio.remove(cloned.id)
    check(removed.id == cloned.id, 'remove answers the removed entity')
    deleted = fetched.delete()
    check(deleted.id == saved.id and Portfolio.retrieve(saved.id) is None, 'delete')
    return {'id': saved.id}


@scenario
def validation_matches_v2():
    bad = Portfolio(name='dup ids', workspace=WORKSPACE, securities=[
        {'id': 'p1', 'symbol': 'AAPL', 'quantity': 1}, {'id': 'p1', 'symbol': 'JPM', 'quantity': 1}])
    message = expect_error(bad.validate)
    check('p1' in message, 'the duplicate id is named: %s' % message)
    message = expect_error(lambda: Portfolio.modify('port_' + 'z' * 25, {'name': 'x'}))
    check('not found' in message, 'modify of an unknown id is a 404: %s' % message)
    return {}


@scenario
def many_forms():
    made = Datastore.create_many([
        {'name': 'T1', 'workspace': WORKSPACE, 'data': [['a'], [1]], 'tags': [TAG]},
        {'name': 'T2', 'workspace': WORKSPACE, 'data': [['a'], [2]], 'tags': [TAG]},
    ])
    ids = [d.id for d in made]
    check(len(ids) == 2 and all(i.startswith('dats_') for i in ids), 'create_many')
    renamed = Datastore.modify_many(ids, {'description': 'both'})
    check([d.description for d in renamed] == ['both', 'both'], 'modify_many')
    check(Datastore.remove_many(ids) == ids, 'remove_many')
    return {'ids': len(ids)}


@scenario
def queries():
    made = [Portfolio(name='Q%d' % i, workspace=WORKSPACE, date='2022122%d' % i, securities=SECURITIES,
                      tags=[TAG, 'q%d' % i]).save() for i in range(1, 4)]
    query = Portfolio.query.where('workspace', WORKSPACE).where('tags', TAG)
    loaded = query.sort_by('name').loads()
    check([p.name for p in loaded] == ['Q1', 'Q2', 'Q3'], 'loads ordered by name: %r' % [p.name for p in loaded])
    check(Portfolio.query.where('workspace', WORKSPACE).where('tags', TAG).sort_by('-name').load().name == 'Q3', 'load')
    ids = Portfolio.query.where('workspace', WORKSPACE).where('tags', [TAG, 'q2']).fetch_ids()
    check(ids == [made[1].id], 'every tag must hold: %r' % ids)
    dated = Portfolio.query.where('workspace', WORKSPACE).where('tags', TAG).where('date', '>=', '2022-12-22').loads()
    check(sorted(p.name for p in dated) == ['Q2', 'Q3'], 'date filter: %r' % [p.name for p in dated])
    seen = []
    for page in Portfolio.query.where('workspace', WORKSPACE).where('tags', TAG).sort_by('name').pages(page_size=2):
        seen.extend(p.name for p in page)
    check(seen == ['Q1', 'Q2', 'Q3'], 'pages: %r' % seen)
    limited = Portfolio.query.where('workspace', WORKSPACE).where('tags', TAG).sort_by('name').loads(limit=2, offset=1)
    check([p.name for p in limited] == ['Q2', 'Q3'], 'limit and offset')
    # No projection asked: whole entities, as retrieve gives them (a /v2 list leaves securities out).
    check(all(len(p.securities or []) == len(SECURITIES) for p in loaded), 'loads: whole portfolios, securities included')
    paged = [p for page in Portfolio.query.where('workspace', WORKSPACE).where('tags', TAG).pages(page_size=2) for p in page]
    check(all(len(p.securities or []) == len(SECURITIES) for p in paged), 'pages: whole portfolios')
    stored = Datastore(name='Q data', workspace=WORKSPACE, date='20221228', tags=[TAG], data=[['a', 'b'], [1, 2], [3, 4]]).save()
    found = Datastore.query.where('workspace', WORKSPACE).where('tags', [TAG]).loads()
    check([d.data for d in found] == [[['a', 'b'], [1, 2], [3, 4]]], 'datastore query: data loaded: %r' % [d.data for d in found])
    check(Datastore.query.where('workspace', WORKSPACE).where('tags', TAG).load().data == [['a', 'b'], [1, 2], [3, 4]], 'load: data')
    Datastore.remove(stored.id)
    check(Portfolio.query.where('workspace', WORKSPACE).where('tags', 'nothing' + TAG).load() is None, 'nothing: None')
    Portfolio.remove_many([p.id for p in made])
    return {'loaded': len(loaded)}


@scenario
def custom_index_by_symbol():
    symbol = 'CUSTOM:SDK%d' % os.getpid()
    index = CustomIndex(symbol=symbol, name='SDK index', data=[['20221227', 1.0], ['20221228', 1.01]]).save()
    check(index.symbol == symbol and index.id == symbol, 'client-named: id is the symbol')
    check(CustomIndex.retrieve(symbol).name == 'SDK index', 'retrieve by symbol')
    CustomIndex.remove(symbol)
    return {'symbol': symbol}


@scenario
def private_security_instrument_types():
    made = []
    for kind in ('PrivateFixedIncome', 'PrivateCustomIndex'):
        symbol = 'PRIVATE:SDK_%s_%d' % (kind.upper(), os.getpid())
        security = PrivateSecurity(symbol=symbol, name='SDK %s' % kind, instrument_type=kind, currency='USD',
                                   data={'coupon': 0.05}).save()
        check(security.id == symbol, 'saved by symbol: %r' % security.id)
        again = PrivateSecurity.retrieve(symbol)
        check(again.instrument_type == kind and again.data == {'coupon': 0.05}, 'retrieved as sent: %r' % again.instrument_type)
        made.append(symbol)
    for symbol in made:
        PrivateSecurity.remove(symbol)
    return {'created': len(made)}


@scenario
def file_entity():
    import base64

    from everysk.sdk.entities.file.base import File

    content = base64.b64encode(b'symbol,quantity\nAAPL,100\n').decode('ascii')
    fields = {'name': 'book.csv', 'description': 'a book', 'workspace': WORKSPACE, 'content_type': 'text/csv', 'data': content}
    checked = File.validate_transient(fields)
    check(checked['name'] == 'book.csv' and checked['id'] is None, 'validate_transient: %r' % (checked,))
    made = File.create(fields)
    check(made.id.startswith('file_'), 'create: %r' % made.id)
    again = File.retrieve(made.id)
    check(again.data == content and again.content_type == 'text/csv', 'retrieve: the content inline')
    File.remove(made.id)
    check(File.retrieve(made.id) is None, 'removed')
    return {'id': made.id}


@scenario
def report_entity():
    from everysk.sdk.entities.report.base import Report

    made = Report.create({'name': 'SDK report', 'workspace': WORKSPACE, 'widgets': []})
    check(made.id.startswith('repo_') and made.name == 'SDK report', 'create: %r' % made.id)
    renamed = Report.modify(made.id, {'name': 'SDK report 2'})
    check(renamed.name == 'SDK report 2', 'modify')
    listed = Report.query.where('workspace', WORKSPACE).where('name', 'SDK report 2').loads()
    check([r.id for r in listed] == [made.id], 'a query of reports: %r' % listed)
    check(Report.remove(made.id).id == made.id and Report.retrieve(made.id) is None, 'remove')
    return {'id': made.id}


@scenario
def workflow_run_and_wait():
    execution = Workflow(id=os.environ['PAS_WORKFLOW_OK']).run_and_wait(parameters={'amount': 21}, timeout=120, poll_interval=0.2)
    check(execution.result.data == {'doubled': 42}, 'the Ender result: %r' % (execution.result,))
    return {'result': execution.result.data}


@scenario
def market_data():
    history = MarketData(ticker_list=['AAPL'], start_date='20221219', end_date='20221223').get_historical()
    days = [pair[0] for pair in history['AAPL']]
    check(days == ['20221219', '20221220', '20221221', '20221222', '20221223'], 'historical: %r' % days)
    message = expect_error(lambda: MarketData().search(conditions=[('symbol', '=', 'AAPL')]))
    check('not offered' in message, 'search answers not offered: %s' % message)
    return {'days': len(days)}


@scenario
def user_cache():
    cache = UserCache()
    check(cache.set('greeting', {'hello': [1, 2]}, timeout=60) is True, 'set')
    check(cache.get('greeting') == {'hello': [1, 2]}, 'get')
    check(cache.get('missing%s' % TAG) is None, 'get of a missing key')
    check(cache.incr('count%s' % TAG, 1, initial_value=10) == 11, 'incr from the initial value')
    check(cache.decr('count%s' % TAG, 5) == 6, 'decr')
    cache.set_multi({'a%s' % TAG: 1, 'b%s' % TAG: 2}, timeout=60)
    check(cache.get_multi(['a%s' % TAG, 'b%s' % TAG, 'c%s' % TAG]) == {'a%s' % TAG: 1, 'b%s' % TAG: 2}, 'get_multi')
    check(cache.delete('greeting') is True and cache.get('greeting') is None, 'delete')
    cache.delete_multi(['a%s' % TAG, 'b%s' % TAG])
    check(cache.get_multi(['a%s' % TAG]) == {}, 'delete_multi')
    return {}


@scenario
def user_lock():
    first = UserLock(name='job%s' % TAG, timeout=30)
    check(first.acquire(blocking=False) is True, 'acquire a free lock')
    check(first.get_lock_info()['locked'] is True, 'get_lock_info: locked')
    second = UserLock(name='job%s' % TAG, timeout=30)
    check(second.acquire(blocking=True, blocking_timeout=0.3) is False, 'a held lock is not acquired')
    first.release()
    check(second.acquire(blocking=False) is True, 'free again after release')
    second.release()
    check(UserLock(name='job%s' % TAG).get_lock_info()['locked'] is False, 'released')
    return {}


@scenario
def not_offered():
    from everysk.sdk.entities.workspace.base import Workspace

    message = expect_error(lambda: Workspace.retrieve('main'))
    check('not offered' in message, 'Workspace: %s' % message)
    return {}


finish()
