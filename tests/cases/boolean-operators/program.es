in long X
out boolean InRange, boolean Flag

( X(x)
  { !>InRange(x >= 0 && x <= 10);
    !>Flag(!(x >= 0 && x <= 10) || x == 5);
  }
)*
