"""
`filter()` of both PyPI clients on portfolios and datastores: tags, limit and paging, scoped to the
workspace, as a user finds the books of one strategy.
"""
import os

from scenario_kit import CLIENT, WORKSPACE, check, finish, scenario

if CLIENT == 'legacy':
    import everysk as api
else:
    from everysk import api

TAG = 'strategy%d' % os.getpid()


@scenario
def portfolio_filter_by_tags():
    securities = [{'id': 'p1', 'symbol': 'AAPL', 'quantity': 1}]
    made = [
        api.Portfolio.create(workspace=WORKSPACE, name='F%d' % i, securities=securities, tags=[TAG, 'f%d' % i])['id']
        for i in range(3)
    ]
    found = api.Portfolio.filter(workspace=WORKSPACE, tags=[TAG])
    check(sorted(p['id'] for p in found) == sorted(made), 'the three books of the tag: %r' % found)
    one = api.Portfolio.filter(workspace=WORKSPACE, tags=[TAG, 'f1'])
    check([p['id'] for p in one] == [made[1]], 'every tag must hold')
    first = api.Portfolio.filter(workspace=WORKSPACE, tags=[TAG], limit=2)
    check(len(first) == 2 and first.next_page_token() is not None, 'limit pages')
    rest = api.Portfolio.filter(workspace=WORKSPACE, tags=[TAG], limit=2, page_token=first.next_page_token())
    check(sorted(p['id'] for p in list(first) + list(rest)) == sorted(made), 'the pages hold each book once')
    elsewhere = api.Portfolio.filter(workspace='main', tags=[TAG])
    check(len(elsewhere) == 0, 'another workspace holds none of them')
    for ident in made:
        api.Portfolio.remove(ident, workspace=WORKSPACE)
    return {'found': len(found)}


@scenario
def datastore_filter():
    made = api.Datastore.create(workspace=WORKSPACE, name='Rows', data=[['a'], [1]], tags=[TAG])['id']
    found = api.Datastore.filter(workspace=WORKSPACE, tags=[TAG])
    check([d['id'] for d in found] == [made], 'the datastore of the tag')
    api.Datastore.remove(made, workspace=WORKSPACE)
    return {'found': len(found)}


finish()
