in {} A, {} B
out {} LeftA, long Count

{ n = 0; }
( ( A() { !>LeftA({}); } | B() )*
  &
  ( A() { n = n + 1; !>Count(n); } B() )*
)
