in string Status
out string Mark, long Count

{ n = 0; }
( Status(a)
  { a == "available" ? !>Mark("A");
    : a == "away" ? { n = n + 1; !>Mark("W"); }
    : !>Mark("O");
    for (i: 1, n) !>Count(i);
  }
)*
