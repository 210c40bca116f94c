in double X
out double Q, double R

( X(x) { !>Q(x / 0.0); !>R(x % 0.0); } )*
