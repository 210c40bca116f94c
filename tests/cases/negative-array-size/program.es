in long Size
out long First

( Size(n) { a = new long[n]; a[0] = 5; !>First(a[0]); } )*
