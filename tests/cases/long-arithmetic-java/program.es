in long A, long B
out long Quot, long Rem, long Sum

( A(a) B(b) { !>Quot(a / b); !>Rem(a % b); !>Sum(a + b); } )*
