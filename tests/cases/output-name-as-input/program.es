in {} A
out {} B

( A() { !>B({}); } )*
