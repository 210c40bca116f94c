in long SetMinute
out long Rang

SetMinute(min)
( arrive[(min/60):(min%60):00]() { !>Rang(min); } )*
