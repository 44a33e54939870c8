"""
The market data layer of both PyPI clients (MarketData.symbolsSearch, symbolsCheck, symbolsPrice,
symbolsHistorical, and everysk 1.0.17's symbolsRealtimePrice), used as a user checks a book's symbols
before creating a portfolio. The service holds AAPL, JPM and IND:SPX (the suite imports them).
"""
from scenario_kit import CLIENT, check, finish, scenario

if CLIENT == 'legacy':
    import everysk as api
    from everysk.api_requestor import APIError
else:
    from everysk import api
    from everysk.core.exceptions import APIError


@scenario
def symbols_search():
    found = api.MarketData.symbolsSearch(query='AAP')['symbols_search']
    check(found[0]['symbol'] == 'AAPL' and found[0]['priced'] is True, 'AAPL found first, priced: %r' % found[:1])
    return {'found': [f['symbol'] for f in found]}


@scenario
def symbols_check_before_creating_a_portfolio():
    book = [
        {'id': 'p1', 'symbol': 'AAPL', 'quantity': 100},
        {'id': 'p2', 'symbol': 'NOT:A:SYMBOL', 'quantity': 5},
    ]
    checked = api.MarketData.symbolsCheck(securities=book, date='20221228')['symbols_check']
    by_symbol = {r['symbol']: r for r in checked['results']}
    check(by_symbol['AAPL']['mapped'] is True, 'AAPL is mapped')
    check(by_symbol['NOT:A:SYMBOL']['known'] is False and by_symbol['NOT:A:SYMBOL']['reason'], 'unknown, with a reason')
    calc = api.Calculation.riskAttribution(securities=book, date='20221228', risk_measure='vol')
    check(
        checked['unmapped_tickers'] == calc['risk_attribution']['unmapped_tickers'],
        'the same unmapped_tickers as a calculation',
    )
    return {'unmapped_tickers': checked['unmapped_tickers']}


@scenario
def symbols_price_and_historical():
    prices = api.MarketData.symbolsPrice(symbols=['AAPL', 'JPM'], date='20221225')['symbols_price']
    check(prices['AAPL']['date'] == '20221223' and prices['AAPL']['price'] > 0, 'last price on or before the date')
    history = api.MarketData.symbolsHistorical(symbols=['AAPL'], start_date='20221219', end_date='20221223')
    days = [pair[0] for pair in history['symbols_historical']['AAPL']]
    check(days == ['20221219', '20221220', '20221221', '20221222', '20221223'], 'a week of prices: %r' % days)
    return {'aapl': prices['AAPL']}


@scenario
def latest_prices():
    if CLIENT == 'legacy':
        latest = api.MarketData.symbolsRealtimePrice(symbols=['AAPL'])['symbols_real_time_prices']
    else:
        latest = api.MarketData.symbolsPrice(symbols=['AAPL'])['symbols_price']
    check(latest['AAPL']['date'] >= '20221228', 'the latest stored price')
    return latest


@scenario
def market_data_error_bodies():
    try:
        api.MarketData.symbolsHistorical(symbols=['AAPL'], start_date='20221228', end_date='20221201')
        raise AssertionError('a period ending before it starts was accepted')
    except APIError as error:
        body = __import__('json').loads(str(error))
        check(body['code'] == 400 and 'start_date' in body['message'], '400 naming start_date')
    return {}


finish()
