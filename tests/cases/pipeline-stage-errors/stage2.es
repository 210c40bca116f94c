in long Y
out long Z

( Y(a) Y(b) { !>Z(a / b); } )*
