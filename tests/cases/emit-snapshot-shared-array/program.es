in long Put
out long[] Snapshot, long Alias

{ a = new long[2]; a[0] = 0; a[1] = 0; }
( Put(v)
  { !>Snapshot(a);
    a[0] = v;
    b = a;
    b[1] = v * 10;
    !>Alias(a[1]);
    !>Snapshot(a);
  }
)*
