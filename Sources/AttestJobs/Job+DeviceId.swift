extension Job {
    /// The job's deviceId when it names one (an empty string does not): the verdicts' deviceId wins over a
    /// generated one.
    public var givenDeviceId: String? {
        guard let id = metadata["deviceId"], !id.isEmpty else { return nil }
        return id
    }
}
