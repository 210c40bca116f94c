in long N
out string S, long V

( N(n)
  { { x = n * 2; { !>V(x); } }
    n > 0 ? { !>S("pos"); !>V(n); } : { !>S("nonpos"); n < 0 ? !>S("neg"); }
  }
)*
