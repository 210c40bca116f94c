in {} A, {long f;} B
out long V

( A() { !>V(s.f + 1); } | B(s) )*
