in long[] A
  group(10 / A[0])
  case { A[5] > 0 ? P : Q }
out long Init, long O

{ !>Init(group[0]); }
( P() { !>O(1); } | Q() { !>O(2); } )*
