in {} A
out time At

( A() { !>At(now()); } )*
