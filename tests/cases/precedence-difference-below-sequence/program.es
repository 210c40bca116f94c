in {} Use, {} Inspection
out {} Violation

.* - .* Use() Use() { !>Violation({}); }
