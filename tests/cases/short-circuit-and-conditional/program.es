in long N
out boolean Ok, boolean Either, long Q

( N(n) { !>Ok(n != 0 && 10 / n > 2); !>Either(n == 0 || 10 / n > 2); !>Q(n == 0 ? -1 : 10 / n); } )*
