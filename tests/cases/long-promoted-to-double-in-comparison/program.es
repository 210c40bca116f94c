in long A
out boolean B, double D

( A(n)
  { !>B(n == 9007199254740992.0);
    !>B(n > 9007199254740992.0);
    !>D(n + 0.0);
  }
)*
