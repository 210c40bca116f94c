in long A, long B, {} C
out long O
( A(a) ( {} )* ( C() | {} ) B() { !>O(a); } )*
