in {} Go
out long P

( Go() { for (i: 0, 2) for (j: 0, i) !>P(i * 10 + j); } )*
