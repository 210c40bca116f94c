in double X
out double R

( X(x) { !>R(x % 2.0); !>R(x % -2.0); } )*
