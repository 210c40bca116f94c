in {} A, long B
out double D, {} S

( . + { !> S ( { } ) ; } B(n) { n > 0 ? for (i: 1, n) !>D(i * 0.5); : !>D(10.0); } )*
