in {string id; time due;} Job, {} Cancel
out string Done, string Cancelled

( Job(j)
  ( arrive[(j.due)]() { !>Done(j.id); }
  | Cancel() { !>Cancelled(j.id); }
  )
)*
