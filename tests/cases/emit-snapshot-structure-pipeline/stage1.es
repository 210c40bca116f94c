in long A
out {long f; long g;} S

{ s = {f: 0, g: 0}; }
( A(x) { s.f = x; !>S(s); s.f = -1; s.g = x; } )*
