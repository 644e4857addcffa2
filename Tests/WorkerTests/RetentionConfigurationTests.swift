import Testing
import Worker

/// ATTEST_VERDICT_RETENTION, ATTEST_RISK_HISTORY_RETENTION, ATTEST_BILLING_RETENTION_MONTHS and
/// ATTEST_PARTITION_WIDTH: their defaults, their units, and the values refused at start.
@Suite struct RetentionConfigurationTests {
    let required = ["ATTEST_KAFKA_BROKERS": "127.0.0.1:9092", "ATTEST_DATABASE_URL": "postgresql://u@db/attest"]

    func load(_ settings: [String: String]) throws -> WorkerConfiguration {
        try WorkerConfiguration.load(file: nil, environment: required.merging(settings) { _, new in new }).0
    }

    func problems(_ settings: [String: String]) -> String {
        do throws(WorkerConfiguration.Invalid) {
            _ = try WorkerConfiguration.load(file: nil, environment: required.merging(settings) { _, new in new })
            return ""
        } catch {
            return error.description
        }
    }

    @Test func defaultsOutlastTheJobsTopicsWeekPlusTheMaximumJobAge() throws {
        let c = try load([:])
        #expect(c.verdictRetentionSeconds == 8 * 86_400)
        #expect(c.verdictRetentionSeconds >= 7 * 86_400 + c.maxJobAgeSeconds)
        #expect(c.riskHistoryRetentionSeconds == 90 * 86_400)
        #expect(c.billingRetentionMonths == 25)
        #expect(c.partitionWidthSeconds == 86_400)
    }

    @Test func durationsTakeSecondsOrAUnit() throws {
        for (text, seconds) in [("200000", 200_000), ("200000s", 200_000), ("4000m", 240_000), ("50h", 180_000), ("9d", 777_600)] {
            #expect(try load(["ATTEST_VERDICT_RETENTION": text]).verdictRetentionSeconds == Int64(seconds), "\(text)")
        }
        #expect(try load([
            "ATTEST_PARTITION_WIDTH": "10s", "ATTEST_MAX_JOB_AGE": "30", "ATTEST_VERDICT_RETENTION": "40s",
            "ATTEST_RISK_HISTORY_RETENTION": "40s",
        ])
            .partitionWidthSeconds == 10)
    }

    @Test func aRetentionShorterThanTheMaximumJobAgePlusAPartitionIsRefusedWithAMessage() {
        // 1 day of job age plus a 1-day partition is 2 days: 47 hours is too short, 48 is enough.
        let text = problems(["ATTEST_VERDICT_RETENTION": "47h"])
        #expect(text.contains("ATTEST_VERDICT_RETENTION must be at least ATTEST_MAX_JOB_AGE plus ATTEST_PARTITION_WIDTH"), "\(text)")
        #expect(problems(["ATTEST_VERDICT_RETENTION": "48h"]).isEmpty)
        #expect(problems(["ATTEST_RISK_HISTORY_RETENTION": "1d"]).contains("ATTEST_RISK_HISTORY_RETENTION must be at least"))
        #expect(problems(["ATTEST_MAX_JOB_AGE": "864000"]).contains("ATTEST_VERDICT_RETENTION must be at least"))
    }

    @Test func absurdValuesAreRefused() {
        for (name, value) in [
            ("ATTEST_VERDICT_RETENTION", ""), ("ATTEST_VERDICT_RETENTION", "8x"), ("ATTEST_VERDICT_RETENTION", "-8d"),
            ("ATTEST_VERDICT_RETENTION", "d"), ("ATTEST_VERDICT_RETENTION", "99999999999999999d"),
            ("ATTEST_VERDICT_RETENTION", "101000d"), ("ATTEST_VERDICT_RETENTION", "8 d"), ("ATTEST_VERDICT_RETENTION", "٨d"),
            ("ATTEST_PARTITION_WIDTH", "9s"), ("ATTEST_PARTITION_WIDTH", "32d"), ("ATTEST_PARTITION_WIDTH", "0"),
            ("ATTEST_BILLING_RETENTION_MONTHS", "0"), ("ATTEST_BILLING_RETENTION_MONTHS", "1201"),
        ] {
            #expect(problems([name: value]).contains(name), "\(name)=\(value) was accepted")
        }
        // A retention of more than 100000 partitions.
        #expect(problems(["ATTEST_PARTITION_WIDTH": "10s", "ATTEST_VERDICT_RETENTION": "12d"]).contains("at most 100000 partitions"))
    }
}
