in string Name
out string Echo

{ !>Echo("line1\nline2\t\"q\"\\"); }
( Name(n) { !>Echo(n); } )*
