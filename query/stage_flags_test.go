package query

import "testing"

// TestStageFlagsOfUnknownNames: a name that is no stage is neither left
// out of API version 1 (compiling refuses it, with its own error) nor
// allowed after $changeStream.
func TestStageFlagsOfUnknownNames(t *testing.T) {
	if StageOutsideAPIV1("$noSuchStage") || StageAfterChangeStream("$noSuchStage") {
		t.Error("an unknown stage has flags")
	}
	if !StageOutsideAPIV1("$collStats") || StageOutsideAPIV1("$match") {
		t.Error("$collStats is outside API version 1, $match is in it")
	}
	if !StageAfterChangeStream("$set") || StageAfterChangeStream("$group") {
		t.Error("$set may follow $changeStream, $group may not")
	}
}
