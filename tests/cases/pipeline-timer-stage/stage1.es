in {} Tick
out long Count

( { n = 0; }
  ( Tick() { n = n + 1; } )*
  arrive[.:.:00]() { !>Count(n); }
)*
