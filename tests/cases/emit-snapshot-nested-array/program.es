in long Put
out {long n; long[] a;} S

{ s = {n: 0, a: new long[2]}; s.a[0] = 0; s.a[1] = 0; }
( Put(v)
  { s.a[0] = v;
    !>S(s);
    s.a[1] = v;
    s.n = s.n + 1;
    !>S(s);
  }
)*
