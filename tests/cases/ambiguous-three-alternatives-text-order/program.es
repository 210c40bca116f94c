in {} A
out long B

( A() { !>B(1); } | A() A() { !>B(2); } | A() { !>B(3); } )*
