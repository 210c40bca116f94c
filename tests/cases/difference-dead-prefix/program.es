in {} A, {} B
out {} GotA, {} GotB

( A() { !>GotA({}); } | B() { !>GotB({}); } )* - ( A() B() .* )
