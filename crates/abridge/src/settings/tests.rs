use super::*;

#[test]
fn defaults_follow_the_documented_rules() {
    let limits = Settings::default().limits(200_000).unwrap();
    assert_eq!(limits.reserve, 30_000);
    assert_eq!(limits.threshold, 170_000);
    assert_eq!(limits.keep, 20_000);
    assert_eq!(limits.target, 136_000);
    // Small window: the 16384 floor would leave too little, so 15%.
    let small = Settings::default().limits(20_000).unwrap();
    assert_eq!(small.threshold, 17_000);
    assert_eq!(small.keep, 8_500);
}

// Issue 27, point 8: a window of 10 tokens was accepted.
#[test]
fn a_window_under_the_minimum_is_refused_naming_it() {
    let error = Settings::default().limits(MIN_WINDOW - 1).unwrap_err();
    assert_eq!(
        error.to_string(),
        "settings: window: 2047 tokens is below the smallest window abridge compacts for, 2048 tokens; set the model's window in tokens"
    );
    assert!(Settings::default().limits(10).is_err());
    let least = Settings::default().limits(MIN_WINDOW).unwrap();
    assert!(least.keep < least.threshold && least.threshold < least.window);
}

#[test]
fn a_percent_threshold_is_a_share_of_the_window() {
    let settings = Settings::from_toml("threshold = \"50%\"\n", "t").unwrap();
    assert_eq!(settings.limits(100_000).unwrap().threshold, 50_000);
}

/// Every bad file gives an error that names the key (and the line).
#[test]
fn bad_files_name_the_key() {
    let cases: &[(&str, &str)] = &[
        (
            "enabled = true\nmethod_ordr = [\"digest\"]\n",
            "t:2: unknown field `method_ordr`",
        ),
        (
            "method_order = [\"digest\", \"magic\"]\n",
            "t:1: method_order: unknown method \"magic\"",
        ),
        (
            "threshold = 1000\nkeep_recent_tokens = 1000\n",
            "t:2: keep_recent_tokens: 1000 must be below",
        ),
        ("threshold = \"85\"\n", "t:1:"),
        (
            "threshold = \"150%\"\n",
            "must be above 0% and at most 100%",
        ),
        (
            "target_percent = 0\n",
            "t:1: target_percent: 0 must be 1 to 100",
        ),
        (
            "breaker_failures = 0\n",
            "t:1: breaker_failures: must be at least 1",
        ),
        (
            "enabled = true\nspeculative_percent = 75\n",
            "t:2: speculative_percent: 75 must be 1 to 50",
        ),
        (
            "idle_minutes = 0\n",
            "t:1: idle_minutes: must be at least 1",
        ),
        ("mask_keep = 0\n", "t:1: mask_keep: must be at least 1"),
        (
            "[prune]\nprotect_tokns = 5\n",
            "t:2: unknown field `protect_tokns`",
        ),
        ("enabled = \"yes\"\n", "t:1: invalid type"),
    ];
    for (text, expected) in cases {
        let error = Settings::from_toml(text, "t").unwrap_err().to_string();
        assert!(error.contains(expected), "{text:?}: {error}");
    }
}

#[test]
fn contradictions_with_the_window_name_the_key_and_line() {
    let text = "# window 10k\nreserve = 10000\n";
    let settings = Settings::from_toml(text, "abridge.toml").unwrap();
    let error = settings
        .limits_in(10_000, text, "abridge.toml")
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "abridge.toml:2: reserve: 10000 leaves nothing of the 10000-token window; use a smaller reserve"
    );
    let text = "threshold = 20000\n";
    let settings = Settings::from_toml(text, "a").unwrap();
    let error = settings.limits_in(10_000, text, "a").unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("a:1: threshold: 20000 is outside"),
        "{error}"
    );
    let text = "keep_recent_tokens = 9000\n";
    let settings = Settings::from_toml(text, "a").unwrap();
    let error = settings.limits_in(10_000, text, "a").unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("a:1: keep_recent_tokens: 9000 must be below"),
        "{error}"
    );
}

#[test]
fn json_errors_name_the_path_and_line() {
    let error = Settings::from_json("{\n  \"prune\": {\"protect_tokens\": \"x\"}\n}", "s.json")
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("s.json:2: prune.protect_tokens: invalid type"),
        "{error}"
    );
    let ok = Settings::from_json("{\"method_order\": [\"digest\"]}", "s.json").unwrap();
    assert_eq!(ok.method_order, vec!["digest"]);
}

#[test]
fn settings_round_trip_through_toml_and_json() {
    let settings = Settings {
        threshold: Some(Threshold::Percent(Percent(85.0))),
        auto_continue: Some("Continue.".into()),
        ..Settings::default()
    };
    let json = serde_json::to_string(&settings).unwrap();
    assert_eq!(Settings::from_json(&json, "j").unwrap(), settings);
}
