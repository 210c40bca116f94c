in {} Tick, {} Stop
out long Ticks

( { n = 0; }
  ( Tick() { n = n + 1; } ){2,}
  Stop() { !>Ticks(n); }
)*
