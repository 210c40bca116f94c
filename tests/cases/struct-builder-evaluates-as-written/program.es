in long A
out {long x; long y;} P

( A(z) { !>P({y: 10 / z, x: u + z}); } )*
