package memory

// ProbationTag marks a learned procedure that has not yet proved itself in
// use (substrate RFC §8): retrieval ranks it below a proved one of equal
// score.
const ProbationTag = "probation"
