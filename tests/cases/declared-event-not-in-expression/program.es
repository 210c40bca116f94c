in {} A, {} B

( A() )*
