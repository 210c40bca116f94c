type P = {long f;}
in {} Go
out long O

( Go()
  { s = {f: 1};
    a = new P[2];
    a[0] = s;
    s.f = 5;
    !>O(a[0].f);
    a[1] = a[0];
    a[1].f = 6;
    !>O(s.f);
    b = new long[1];
    arr = new long[1][];
    arr[0] = b;
    b[0] = 9;
    !>O(arr[0][0]);
  }
)*
