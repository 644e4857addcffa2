import AttestCore
import Testing
import Worker

/// The list of settings is the configuration reference (docs/CONFIGURATION.md, `run --help-markdown`): each
/// entry says what it does, and the values it says it accepts are the ones `load` accepts.
@Suite struct ConfigurationReferenceTests {
    /// The configuration's problems with `environment` over the required settings (SettingRangeTests' helper).
    func problems(_ environment: [String: String]) -> String? { SettingRangeTests().problems(environment) }

    @Test func everySettingIsDescribedOnce() {
        let names = WorkerConfiguration.settings.map(\.name)
        #expect(Set(names).count == names.count)
        for setting in WorkerConfiguration.settings {
            #expect(setting.name.hasPrefix("ATTEST_"), "\(setting.name)")
            #expect(!setting.summary.isEmpty && !setting.allowedText.isEmpty, "\(setting.name) lacks a description")
        }
        let markdown = WorkerConfiguration.referenceMarkdown
        for name in names { #expect(markdown.contains("| `\(name)` |"), "\(name) missing from the reference") }
    }

    /// Each whole-number setting refuses one below and one above its stated bounds, naming itself, and the
    /// default loads (the defaults together are a valid configuration).
    @Test func statedBoundsAreTheEnforcedOnes() {
        #expect(problems([:]) == nil)
        for setting in WorkerConfiguration.settings {
            guard case .integer(let min, let max) = setting.allowed else { continue }
            for outside in [min - 1, max + 1] {
                let text = problems([setting.name: String(outside)])
                #expect(text?.contains(setting.name) == true, "\(setting.name)=\(outside) was accepted")
            }
        }
    }

    @Test func durationsAndWordsAreTheEnforcedOnes() {
        for setting in WorkerConfiguration.settings {
            switch setting.allowed {
            case .duration(_, let max):
                #expect(problems([setting.name: String(max + 1)])?.contains(setting.name) == true, "\(setting.name)")
            case .oneOf(let words):
                #expect(problems([setting.name: "none-of-these"])?.contains(setting.name) == true, "\(setting.name)")
                for word in words {
                    #expect(problems([setting.name: word]) == nil, "\(setting.name)=\(word) refused")
                }
            case .boolean:
                #expect(problems([setting.name: "maybe"])?.contains(setting.name) == true, "\(setting.name)")
            default: break
            }
        }
    }
}
