package dispatch

// SQLTokenReused is the offer pull's token check, for its plan test.
var SQLTokenReused = sqlTokenReused
