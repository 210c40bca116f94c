in long N
out boolean Eq, double Q, long L

( N(n) { !>Eq(n == 2.0); !>Q(n / 4.0); !>L(n / 4); } )*
