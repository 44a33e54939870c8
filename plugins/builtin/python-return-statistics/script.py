"""Return statistics of a price table, computed with pandas and numpy (see template.json)."""

import numpy as np
import pandas as pd


def read_prices(datastore):
    rows = datastore.get("data") or []
    if len(rows) < 3:
        raise ValueError("The datastore needs a header row and at least two rows of prices")
    header = [str(cell) for cell in rows[0]]
    frame = pd.DataFrame([row[: len(header)] for row in rows[1:]], columns=header)
    frame = frame.set_index(header[0])
    frame.index = pd.to_datetime(frame.index.astype(str), errors="coerce")
    frame = frame[frame.index.notna()].sort_index()
    prices = frame.apply(pd.to_numeric, errors="coerce")
    prices = prices.where(prices > 0)
    if prices.shape[1] == 0 or prices.dropna(how="all").shape[0] < 2:
        raise ValueError("The datastore holds no series with at least two positive prices")
    return prices


def max_drawdown(series):
    wealth = series.dropna()
    if wealth.empty:
        return None
    return float((wealth / wealth.cummax() - 1).min())


def main(args):
    inputs = args["script_inputs"]
    rate = float(inputs.get("risk_free_rate") or 0)
    periods = float(inputs.get("periods_per_year") or 252)
    datastore = sdk.retrieveDatastore(inputs["datastore_id"])
    prices = read_prices(datastore)
    returns = np.log(prices / prices.shift(1)).iloc[1:]
    statistics = []
    for name in prices.columns:
        series = returns[name].dropna()
        mean = float(series.mean() * periods) if len(series) else None
        volatility = float(series.std(ddof=1) * np.sqrt(periods)) if len(series) > 1 else None
        sharpe = (mean - rate) / volatility if mean is not None and volatility else None
        statistics.append(
            {
                "series": name,
                "observations": int(len(series)),
                "annualised_mean": mean,
                "annualised_volatility": volatility,
                "sharpe_ratio": sharpe,
                "max_drawdown": max_drawdown(prices[name]),
                "last_price": float(prices[name].dropna().iloc[-1]),
            }
        )
    correlation = returns.corr(min_periods=2)
    table = [["series", "observations", "annualised_mean", "annualised_volatility", "sharpe_ratio", "max_drawdown"]]
    table += [[s["series"], s["observations"], s["annualised_mean"], s["annualised_volatility"], s["sharpe_ratio"], s["max_drawdown"]] for s in statistics]
    return {
        "datastore_id": datastore["id"],
        "first_date": prices.index[0].strftime("%Y-%m-%d"),
        "last_date": prices.index[-1].strftime("%Y-%m-%d"),
        "statistics": statistics,
        "correlation": {name: correlation[name].to_dict() for name in correlation.columns},
        "rows": table,
    }
