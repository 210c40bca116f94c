in {} A
out long X

( A() { !>X(1); } | elapse[5 sec]() { !>X(5); } )* - ( A() A() elapse[3 sec]() { !>X(3); } )
