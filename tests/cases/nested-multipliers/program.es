in {} A, {} B, {} C
out long Count

( { k = 0; }
  ( A(){2} B() { k = k + 1; } ){1,2}
  C() { !>Count(k); }
)*
