//! The command line in Chinese: `--lang`, and the system's LANG.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::support::{assert_one_line_error, dlsys_lab, dlsys_lab_in, has_cjk};

#[test]
fn the_cli_speaks_chinese_when_asked_or_when_the_system_does() {
    // `--lang zh`, and LANG=zh_CN.UTF-8 without `--lang`: the same Chinese.
    let asked = dlsys_lab(&["--lang", "zh", "lessons"]);
    let system = dlsys_lab_in("zh_CN.UTF-8", &["lessons"]);
    let english = dlsys_lab(&["lessons"]);
    for out in [&asked, &system] {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("道练习"), "{text}");
        assert!(
            text.contains("浮点格式"),
            "a lesson title in Chinese: {text}"
        );
    }
    assert_eq!(asked.stdout, system.stdout);
    let text = String::from_utf8_lossy(&english.stdout);
    assert!(!has_cjk(&text) && text.contains("exercises"), "{text}");
    // `--lang en` wins over a Chinese system.
    let out = dlsys_lab_in("zh_CN.UTF-8", &["lessons", "--lang", "en"]);
    assert_eq!(out.stdout, english.stdout);

    // The float report: labels, the class and the rounding mode in Chinese,
    // the numbers as in English.
    let out = dlsys_lab(&["--lang", "zh", "float", "65520"]);
    let zh = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for word in [
        "输入",
        "舍入",
        "就近舍入（偶数优先）",
        "无穷大",
        "最小非规格化数",
        "0x7c00",
        "65504",
    ] {
        assert!(zh.contains(word), "`{word}` missing:\n{zh}");
    }
    let en = String::from_utf8_lossy(&dlsys_lab(&["float", "65520"]).stdout).into_owned();
    assert!(!has_cjk(&en) && en.contains("infinite"), "{en}");

    // JSON keys and values stay English in either language.
    let zh_json = dlsys_lab(&["--lang", "zh", "float", "65520", "--json"]).stdout;
    let en_json = dlsys_lab(&["float", "65520", "--json"]).stdout;
    assert_eq!(zh_json, en_json);

    // Errors and help in Chinese; a bad --lang is refused in one line.
    let out = dlsys_lab(&["--lang", "zh", "float", "1.5", "-f", "fp64"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && has_cjk(&err), "{err}");
    let help = String::from_utf8_lossy(&dlsys_lab(&["--lang", "zh", "--help"]).stdout).into_owned();
    assert!(
        help.contains("用法") && help.contains("列出所有课程"),
        "{help}"
    );
    let out = dlsys_lab(&["--lang", "zh", "memory", "--transformer", "llama-7b"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("参数量 6.738B") && text.contains("优化器状态"),
        "{text}"
    );
    let out = dlsys_lab(&[
        "--lang", "zh", "memory", "--layers", "2", "--hidden", "10", "--heads", "3",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("整数倍"), "{err}");
    assert_one_line_error(
        &["--lang", "fr", "lessons"],
        &dlsys_lab(&["--lang", "fr", "lessons"]),
    );
}
