"""Settings come from a TOML file, then FONDS_* variables, and bad values are refused clearly."""

from pathlib import Path

import pytest

from fonds.config import SETTINGS_FIELDS, SettingsError, env_name, load_settings


def test_defaults_match_the_documented_ones(tmp_path):
    settings = load_settings(env={})
    assert (settings.default_page_size, settings.max_page_size, settings.session_expire_seconds) == (10, 250, 3600)
    assert settings.effective_database_url.startswith("sqlite:///") and settings.effective_database_url.endswith("fonds-data/fonds.sqlite3")


def test_memory_settings_default_to_one_arena_and_a_release_every_ten_seconds():
    settings = load_settings(env={})
    assert (settings.malloc_arenas, settings.memory_release_seconds) == (1, 10.0)
    assert load_settings(env={"FONDS_MEMORY_RELEASE_SECONDS": "0"}).memory_release_seconds == 0


def test_environment_overrides_the_toml_file(tmp_path):
    config = tmp_path / "fonds.toml"
    config.write_text("default_page_size = 20\nmax_page_size = 100\nstrict_validation = true\n")
    settings = load_settings(env={"FONDS_MAX_PAGE_SIZE": "50"}, config_file=config)
    assert (settings.default_page_size, settings.max_page_size, settings.strict_validation) == (20, 50, True)


def test_config_file_can_be_named_by_fonds_config(tmp_path):
    config = tmp_path / "fonds.toml"
    config.write_text('database_url = "postgresql://db.example/fonds"\n')
    assert load_settings(env={"FONDS_CONFIG": str(config)}).effective_database_url == "postgresql://db.example/fonds"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"FONDS_DEFAULT_PAGE_SIZE": "ten"}, "FONDS_DEFAULT_PAGE_SIZE"),
        ({"FONDS_MAX_PAGE_SIZE": "0"}, "FONDS_MAX_PAGE_SIZE"),
        ({"FONDS_STRICT_VALIDATION": "maybe"}, "FONDS_STRICT_VALIDATION"),
        ({"FONDS_MALLOC_ARENAS": "0"}, "FONDS_MALLOC_ARENAS"),
        ({"FONDS_MEMORY_RELEASE_SECONDS": "-1"}, "FONDS_MEMORY_RELEASE_SECONDS"),
        ({"FONDS_DEFAULT_PAGE_SIZE": "300"}, "must not exceed"),
    ],
)
def test_bad_values_are_refused_naming_the_variable(env, message):
    with pytest.raises(SettingsError, match=message):
        load_settings(env=env)


def test_unknown_keys_in_the_toml_file_are_refused(tmp_path):
    config = tmp_path / "fonds.toml"
    config.write_text("page_size = 5\n")
    with pytest.raises(SettingsError, match="unknown setting 'page_size'"):
        load_settings(env={}, config_file=config)


def test_every_setting_is_documented_in_the_readme():
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    for setting in SETTINGS_FIELDS:
        assert f"`{env_name(setting)}`" in readme
