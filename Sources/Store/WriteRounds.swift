/// Splits decisions into rounds in which no row is written twice, because one set-based statement cannot
/// change a row twice: round n holds the n-th decision of every row that has at least n, each round in
/// the order given. Run as one statement per round, in order, they apply a row's decisions in that order.
/// - Parameters:
///   - indices: the decisions' positions, in the order they are applied.
///   - row: the row a decision writes.
func writeRounds<Row: Hashable>(_ indices: some Sequence<Int>, row: (Int) -> Row) -> [[Int]] {
    var rounds = [[Int]]()
    var writes = [Row: Int]()
    for index in indices {
        let round = writes[row(index), default: 0]
        writes[row(index)] = round + 1
        if rounds.count == round { rounds.append([]) }
        rounds[round].append(index)
    }
    return rounds
}
