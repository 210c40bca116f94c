in {} A
out long O

( A() { !>O(1); } | elapse[5 sec]() { !>O(2); } )* - ( .* A() A() )
