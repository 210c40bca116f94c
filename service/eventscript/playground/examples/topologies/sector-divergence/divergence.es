// Price divergence per stock symbol: a trade at least 2% above the day's volume-weighted average
// price (VWAP) of the symbol's earlier trades. This is the finance3 benchmark of Hirzel, "Partition
// and Compose: Parallel Complex Event Processing" (DEBS 2012), VWAP then divergence, partitioned
// by symbol as in the paper; here one program keeps the VWAP and matches the divergence.
in { string symbol; string sector; double price; long size; }
  Trade
  group(Trade.symbol)

out { string sector; string symbol; double price; double vwap; time when; }
  Divergence

{ MARGIN = 0.02; }
// The symbol's first trade of the day opens its VWAP.
Trade(t) { turnover = t.price*t.size; shares = t.size; }
(
  Trade(t)
  { vwap = turnover/shares;
    t.price >= vwap*(1.0+MARGIN) ?
      !>Divergence({ sector: t.sector, symbol: t.symbol, price: t.price, vwap: vwap, when: now() });
    turnover = turnover+t.price*t.size;
    shares = shares+t.size;
  }
)*
// The day ends at midnight, and so does the instance: the next trade opens a new day's VWAP.
arrive[00:00]()
