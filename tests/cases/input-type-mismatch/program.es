in long N
out long Echo

( N(n) { !>Echo(n); } )*
