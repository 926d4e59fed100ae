package query

// The update operator table: every modifier of an update document, in
// groups by topic, each group sorted by name.
var updateTable = [][]*modifier{
	{ // setting, renaming and removing fields
		{name: "$rename", parse: parseRename, apply: applyRename},
		{name: "$set", parse: noParse, apply: applySet},
		{name: "$setOnInsert", parse: noParse, apply: applySetOnInsert},
		{name: "$unset", parse: noParse, apply: applyUnset},
	},
	{ // arithmetic, bits, comparison and dates
		{name: "$bit", parse: parseBit, apply: applyBit},
		{name: "$currentDate", parse: parseCurrentDate, apply: applyCurrentDate},
		{name: "$inc", parse: parseArith("$inc", "increment"), apply: applyArith(false)},
		{name: "$max", parse: noParse, apply: applyMinMax(1)},
		{name: "$min", parse: noParse, apply: applyMinMax(-1)},
		{name: "$mul", parse: parseArith("$mul", "multiply"), apply: applyArith(true)},
	},
	{ // arrays
		{name: "$addToSet", parse: parseAddToSet, apply: applyAddToSet},
		{name: "$pop", parse: parsePop, apply: applyPop},
		{name: "$pull", parse: parsePull, apply: applyPull},
		{name: "$pullAll", parse: parsePullAll, apply: applyPull},
		{name: "$push", parse: parsePush, apply: applyPush},
	},
}

// modifier describes an update operator: how to validate one field's
// argument and how to apply it.
type modifier struct {
	name  string
	parse func(op *updateOp) error
	apply func(c *applyCtx, op *updateOp) error
}

func (m *modifier) rowName() string { return m.name }

// modifiers finds updateTable's rows by name.
var modifiers = indexTable(updateTable)
