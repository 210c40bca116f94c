in double S1Input, double S2Input, {} Reset
out long Others

{ n = 0; }
( S1Input() | ( . - S1Input() ) { n = n + 1; !>Others(n); } )*
