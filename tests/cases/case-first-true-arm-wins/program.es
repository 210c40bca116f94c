in long V case { V > 0 ? Pos : V > 10 ? Big : NonPos }
out string Class

( Pos() { !>Class("pos"); } | Big() { !>Class("big"); } | NonPos() { !>Class("nonpos"); } )*
