// A sector breaks out when two of its symbols diverge within 10 minutes of each other. Grouped by
// sector (the first stage is grouped by symbol); the instance keeps the sector's latest
// divergence and ends when that one is 10 minutes old, so quiet sectors hold no state.
in { string sector; string symbol; double price; double vwap; time when; }
  Divergence
  group(Divergence.sector)

out { string sector; string first; string second; time when; }
  SectorBreakout

// one divergence pending
Divergence(last) { expires = minutesAfter(10, last.when); }
(
  Divergence(d)
  { d.symbol != last.symbol ?
      !>SectorBreakout({ sector: group[0], first: last.symbol, second: d.symbol, when: d.when });
    last = d;
    expires = minutesAfter(10, d.when);
  }
)*
arrive[(expires)]()
// no divergence pending: the instance ends
