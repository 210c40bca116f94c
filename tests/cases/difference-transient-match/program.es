in {} A, {} B
out {} Left, {} Two

( A() { !>Left({}); } | B() )* - ( A() A() { !>Two({}); } )
