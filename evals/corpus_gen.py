"""Generate a deterministic synthetic Markdown corpus for benchmarking tansaku.

    .venv/bin/python evals/corpus_gen.py [OUT_DIR] [--seed N] [--files N] [--force]

The default is 10,000 files (~40 MB, ~4 KB each) in ``evals/cache/corpus-10k`` (gitignored), laid
out as 10 areas x 10 folders x 100 files. About 10% of the files are in Chinese, built from common
two-character words so that jieba has real words to cut. The English text draws from a few thousand
word forms with Zipf-like frequencies plus per-file topic words and collocations, so BM25 sees a
realistic spread of common and rare terms.

Everything comes from ``random.Random`` seeded by the seed and the file number: the same seed and
generator version give byte-identical files on every machine. A stamp file (``.corpus-stamp.json``,
hidden so tansaku never indexes it) records the parameters and a digest of the corpus; a re-run
with matching parameters does nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import random
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

GENERATOR_VERSION = 1
DEFAULT_SEED = 20240601
DEFAULT_FILES = 10_000
DEFAULT_OUT = Path(__file__).resolve().parent / "cache" / "corpus-10k"
STAMP_NAME = ".corpus-stamp.json"
AREAS = 10
FOLDERS_PER_AREA = 10
CHINESE_FRACTION = 0.10
# Document sizes in bytes (of UTF-8 text): uniform between these, so ~4 KB on average.
MIN_BYTES, MAX_BYTES = 2_500, 5_500
# Fixed, so the vocabulary ranks (and the benchmark's queries) do not depend on the corpus seed.
VOCAB_SEED = 1

# --- English vocabulary ------------------------------------------------------------------------

# Function words and very common words, roughly by frequency: they take the top Zipf ranks.
COMMON = """
the of and to a in is that for it as was with be by on not he this are or his from at which but
have an they you were her she there been one all we their has would when if so no will more can
said who them some could into other then than its about these out may only up time new first like
over also after such two use our most used any what made many should where well between each people
those very must through both how because under same while few much own even years being around part
since within during three work without another against just every here again still never before
why however often might already always something nothing down off yet less least almost enough
rather quite perhaps usually later soon today once twice four five six seven ten hundred thousand
half next last second third whole sure able likely several various certain given found known seen
taken written made kept sent built left told thought began shown done gone run ran got put set let
make makes making take takes taking took see sees seeing saw know knows knowing knew think thinks
thinking give gives giving gave find finds finding get gets getting keep keeps keeping write writes
writing wrote read reads reading send sends sending build builds building begin begins beginning
"""

# Regular verbs: each yields four forms (base, -s, -ed, -ing).
VERBS = """
accept access add adjust allow analyze append apply archive arrange ask attach attempt avoid
back balance borrow call cancel change check clean clear collect combine compare complete compute
configure confirm connect consider contain continue convert copy correct count create debug decide
declare decode define delete deliver depend deploy describe detect develop disable discover display
divide edit enable encode end ensure enter estimate evaluate examine exclude execute expand expect
explain export extend extract fail fetch fill filter finish fix follow format generate handle happen
help highlight identify ignore import improve include increase index inform install intend introduce
invite join jump label launch learn list listen load locate look manage mark match measure mention
merge migrate miss monitor mount move name need note notice obtain open order organize own pack
parse pass perform pick play point prefer prepare present prevent print process produce protect
provide publish pull push query rank reach record reduce refer register release remain remember
remove rename render repair repeat replace report request require reset resolve respond restart
restore retain return review rotate save schedule search select separate serve share show sign
sort start stay store suggest support switch sync test touch track train transfer trigger trust try
turn type update upgrade upload use validate verify view visit wait walk want watch wonder work
worry
"""

# Verbs whose last consonant doubles before -ed and -ing (stop -> stopped, stopping).
DOUBLING_VERBS = "stop plan drop ship map log commit submit scan tag skip step wrap swap trim chop"

# Nouns: each yields singular and plural.
NOUNS = """
account action address advice agent answer area argument article attention author balance bank
base bill bit block board body book border box branch bridge budget buffer bug button cache
call camera card case cell center chain chair chance channel chapter character chart choice
city class client clock cloud code column comment community company computer condition
connection context control copy corner cost country course cover customer cycle date day deal
decision default detail device difference direction disk document door draft driver edge effect
effort element email engine entry environment error event example exception experience expert
face fact factor family feature field figure file floor folder form frame friend function game
garden goal group guide habit hand header heading home hour house idea image impact input instance
issue item job journal key kitchen language layer layout lesson letter level library limit line
link list load location lock log loop machine manager map market matter meaning member memory
message method minute mistake mode model moment month morning name need network night node note
number object office option order output owner package page pair panel paper parent partner path
pattern payment period person phase phone picture piece place plan platform player point policy
pool port position post power practice price problem process product profile program project
prompt property question queue range rate reason record region release report request resource
result review risk road role room root rule sample scale scene school screen script section sector
server service session setting shape sheet signal site size skill slot source space speed stage
standard state station step storage store story stream street string structure student style
subject summary system table tag task team template term text theme thing thread ticket title
tool topic total track trade tree trip type unit user value version video view volume week window
word worker world year
"""

ADJECTIVES = """
able active actual additional available aware basic better big broad busy careful central cheap
clean clear close common complete complex correct current dark deep default different difficult
direct early easy empty entire equal exact existing expensive extra fair familiar fast final fine
firm free fresh full general good great green happy hard heavy helpful high huge important initial
interesting large late light little local long low main major manual minor missing modern narrow
natural nearby necessary nice normal obvious old open original other particular personal plain
popular possible previous primary private proper public quick quiet rare ready real recent regular
related relevant remote simple single slow small smart soft solid special specific stable standard
strange strict strong sudden sufficient suitable short temporary tiny typical unique unusual useful
usual valid visible warm weak whole wide wrong young
quickly slowly carefully easily usually rarely clearly simply mostly nearly really probably
actually finally recently directly exactly manually automatically properly roughly safely
"""

# Topics: words that cluster within a file, plus collocations that make phrase queries meaningful.
TOPICS: dict[str, tuple[str, str]] = {
    "backup": (
        "backup backups snapshot restore archive retention rsync tarball incremental offsite mirror "
        "checksum nightly",
        "incremental backup|restore the snapshot|offsite backup|retention policy",
    ),
    "compression": (
        "compression gzip zstd deflate ratio entropy codec dictionary lz4 decompress bzip2 xz",
        "compression ratio|compression level|dictionary size",
    ),
    "permissions": (
        "permission permissions chmod chown umask acl sudo privilege readonly executable setuid ownership",
        "file permissions|read only|group ownership",
    ),
    "networking": (
        "network router subnet gateway firewall dns latency packet bandwidth tcp udp proxy",
        "packet loss|default gateway|reverse proxy",
    ),
    "databases": (
        "database sqlite postgres transaction schema migration vacuum journal replica cursor wal fts",
        "schema migration|write ahead log|database transaction",
    ),
    "search": (
        "ranking bm25 tokenizer stemming relevance snippet inverted posting corpus recall precision",
        "inverted index|search ranking|query expansion",
    ),
    "git": (
        "git commit branch rebase stash remote checkout diff conflict bisect upstream",
        "merge conflict|feature branch|interactive rebase",
    ),
    "python": (
        "python virtualenv module decorator generator coroutine pytest typing pip wheel asyncio",
        "virtual environment|type hints|unit tests",
    ),
    "linux": (
        "kernel systemd daemon signal cgroup namespace filesystem inode syslog cron ext4 swap",
        "file system|cron job|kernel module",
    ),
    "security": (
        "encryption certificate tls password token signature audit vulnerability cipher secret gpg",
        "public key|password manager|security audit",
    ),
    "cooking": (
        "recipe flour butter oven garlic onion simmer saute knead dough pepper vinegar",
        "olive oil|bread dough|low heat",
    ),
    "gardening": (
        "soil compost seedling tomato mulch prune watering harvest trellis fertilizer perennial",
        "tomato plants|raised bed|compost heap",
    ),
    "travel": (
        "itinerary flight hotel passport luggage train airport visa booking ferry hostel",
        "train station|hotel booking|travel insurance",
    ),
    "finance": (
        "invoice expense receipt savings mortgage interest tax dividend ledger pension payroll",
        "tax return|savings account|monthly budget",
    ),
    "health": (
        "exercise sleep nutrition protein vitamin stretching calorie hydration posture cardio meditation",
        "sleep schedule|blood pressure|daily exercise",
    ),
    "music": (
        "guitar chord melody rhythm tempo piano harmony lyrics amplifier metronome arpeggio",
        "chord progression|major scale|sheet music",
    ),
    "photography": (
        "lens aperture shutter exposure tripod histogram bokeh focal iso flash",
        "shutter speed|focal length|white balance",
    ),
    "writing": (
        "outline manuscript editor paragraph revision narrative dialogue plot publisher",
        "first draft|point of view|short story",
    ),
    "meetings": (
        "agenda meeting minutes standup retrospective stakeholder roadmap milestone deadline",
        "action items|weekly meeting|next steps",
    ),
    "hardware": (
        "laptop keyboard monitor ssd battery firmware usb motherboard cpu charger bios",
        "battery life|firmware update|external drive",
    ),
    "docker": (
        "docker container volume compose registry dockerfile orchestration kubernetes pod helm",
        "container image|docker compose|health check",
    ),
    "web": (
        "html css javascript browser cookie endpoint http api json response websocket",
        "rate limit|status code|content type",
    ),
    "testing": (
        "fixture mock assertion coverage regression benchmark flaky snapshot integration harness",
        "test coverage|regression test|flaky test",
    ),
    "editor": (
        "vim emacs keybinding plugin macro syntax terminal shell tmux dotfiles",
        "key binding|syntax highlighting|status line",
    ),
    "math": (
        "matrix vector integral derivative probability theorem proof equation polynomial eigenvalue gradient",
        "linear algebra|gradient descent|random variable",
    ),
    "books": (
        "novel fiction poetry biography essay reader bookmark paperback anthology",
        "reading list|book club|science fiction",
    ),
}

CODE_LANGS = ("bash", "python", "json", "yaml", "toml", "sql", "text")
CODE_COMMANDS = (
    "rsync -av --delete",
    "tar -czf",
    "git log --oneline",
    "chmod 644",
    "docker compose up -d",
    "sqlite3 notes.db",
    "python -m pytest -q",
    "grep -rn",
    "find . -name",
    "systemctl restart",
    "curl -sS",
    "zstd -19",
)

# --- Chinese vocabulary ------------------------------------------------------------------------

# Common two-character words, grouped by theme (see chinese_vocabulary for their Zipf ranks).
_CHINESE_TOPIC_LINES = """
files: 文件 目录 路径 磁盘 备份 恢复 压缩 解压 归档 存储 空间 容量 分区 格式 镜像 快照 同步 复制 删除 移动
security: 权限 用户 密码 账号 登录 认证 授权 加密 解密 证书 密钥 安全 漏洞 攻击 防护 审计 令牌 签名 隐私 保护
network: 网络 服务 端口 协议 地址 域名 代理 连接 请求 响应 延迟 带宽 路由 网关 下载 上传 传输 节点 集群 负载
data: 数据 索引 查询 搜索 结果 排序 分词 词典 检索 匹配 关键 字段 表格 记录 事务 日志 缓存 统计 分析 过滤
code: 程序 代码 函数 变量 模块 接口 调试 编译 测试 版本 分支 合并 提交 发布 部署 脚本 命令 参数 错误 异常
system: 系统 进程 线程 内存 处理 调度 内核 驱动 设备 硬件 软件 安装 卸载 更新 升级 启动 关闭 重启 监控 性能
work: 项目 会议 计划 任务 目标 进度 报告 总结 团队 成员 客户 需求 设计 方案 文档 流程 规范 质量 评审 反馈
life: 生活 工作 时间 今天 明天 周末 早上 晚上 朋友 家人 孩子 父母 学校 老师 学生 公司 城市 天气 季节 假期
cooking: 烹饪 菜谱 米饭 面条 鸡蛋 蔬菜 水果 牛肉 猪肉 豆腐 调料 酱油 食盐 白糖 火锅 早餐 午餐 晚餐 厨房 味道
travel: 旅行 旅游 机票 酒店 火车 飞机 护照 签证 行李 景点 地图 导航 预订 出发 到达 车站 机场 门票 导游 风景
health: 健康 运动 跑步 睡眠 饮食 营养 医生 医院 药物 身体 体重 锻炼 休息 心情 压力 习惯 检查 疾病 治疗 预防
study: 学习 阅读 书籍 笔记 知识 课程 考试 练习 语言 英语 数学 历史 文化 科学 研究 论文 作者 章节 图书 写作
money: 财务 预算 收入 支出 发票 账单 工资 税务 投资 股票 基金 银行 贷款 利息 保险 价格 成本 利润 市场 经济
general: 重要 简单 复杂 快速 稳定 可靠 方便 有效 需要 可以 应该 已经 开始 完成 使用 提供 支持 实现 包括 发现
"""
CHINESE_TOPICS = {
    name: words.strip()
    for name, _, words in (line.partition(":") for line in _CHINESE_TOPIC_LINES.strip().splitlines())
}
CHINESE_PARTICLES = ("的", "了", "和", "在", "是", "把", "对", "与", "或", "也", "都", "就", "还", "很", "不")
CHINESE_INLINE_LATIN = ("rsync", "tar", "gzip", "SQLite", "Python", "Git", "Docker", "API", "JSON", "Linux")


def _plural(word: str) -> str:
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _verb_forms(verb: str, doubling: bool) -> list[str]:
    stem = verb + verb[-1] if doubling else verb
    if verb.endswith("e"):
        past, ing = verb + "d", verb[:-1] + "ing"
    elif verb.endswith("y") and verb[-2] not in "aeiou":
        past, ing = verb[:-1] + "ied", verb + "ing"
    else:
        past, ing = stem + "ed", stem + "ing"
    return [verb, _plural(verb), past, ing]


def english_vocabulary() -> list[str]:
    """Word forms by Zipf rank: common words first, then content forms in a fixed shuffled order."""
    common = list(dict.fromkeys(COMMON.split()))
    content: list[str] = []
    for verb in VERBS.split():
        content += _verb_forms(verb, doubling=False)
    for verb in DOUBLING_VERBS.split():
        content += _verb_forms(verb, doubling=True)
    for noun in NOUNS.split():
        content += [noun, _plural(noun)]
    content += ADJECTIVES.split()
    seen = set(common)
    unique = [w for w in dict.fromkeys(content) if w not in seen]
    random.Random(VOCAB_SEED).shuffle(unique)
    return common + unique


def chinese_vocabulary() -> list[str]:
    """Words by Zipf rank: the general words first, then the themed ones in a fixed shuffled order."""
    general = CHINESE_TOPICS["general"].split()
    themed = [w for name, group in CHINESE_TOPICS.items() if name != "general" for w in group.split()]
    themed = [w for w in dict.fromkeys(themed) if w not in general]
    random.Random(VOCAB_SEED).shuffle(themed)
    return general + themed


def zipf_weights(n: int, exponent: float) -> list[float]:
    """Cumulative weights for ``Random.choices``: rank r has weight 1 / r**exponent."""
    return list(itertools.accumulate(1.0 / (rank**exponent) for rank in range(1, n + 1)))


@dataclass(frozen=True)
class Vocabulary:
    english: list[str]
    english_cum: list[float]
    common: frozenset[str]
    topics: dict[str, tuple[list[str], list[str]]]  # name -> (words, phrases)
    chinese: list[str]
    chinese_cum: list[float]
    chinese_topics: dict[str, list[str]]

    @classmethod
    def build(cls) -> Vocabulary:
        english = english_vocabulary()
        chinese = chinese_vocabulary()
        return cls(
            english=english,
            english_cum=zipf_weights(len(english), 1.0),
            common=frozenset(COMMON.split()),
            topics={name: (words.split(), phrases.split("|")) for name, (words, phrases) in TOPICS.items()},
            chinese=chinese,
            chinese_cum=zipf_weights(len(chinese), 0.8),
            chinese_topics={name: group.split() for name, group in CHINESE_TOPICS.items()},
        )


# --- documents ---------------------------------------------------------------------------------


class _EnglishWriter:
    def __init__(self, rng: random.Random, vocab: Vocabulary, topics: list[str]) -> None:
        self.rng = rng
        self.vocab = vocab
        self.topic_words = [w for t in topics for w in vocab.topics[t][0]]
        self.phrases = [p for t in topics for p in vocab.topics[t][1]]

    def word(self) -> str:
        r = self.rng.random()
        if r < 0.12:
            return self.rng.choice(self.topic_words)
        return self.rng.choices(self.vocab.english, cum_weights=self.vocab.english_cum)[0]

    def words(self, n: int) -> list[str]:
        out: list[str] = []
        while len(out) < n:
            if self.rng.random() < 0.03:
                out += self.rng.choice(self.phrases).split()
            else:
                out.append(self.word())
        return out

    def sentence(self) -> str:
        words = self.words(self.rng.randint(6, 18))
        if len(words) > 8 and self.rng.random() < 0.4:
            words[self.rng.randint(3, len(words) - 3)] += ","
        return words[0].capitalize() + " " + " ".join(words[1:]) + "."

    def content_word(self) -> str:
        """A word below the function-word ranks, for titles."""
        while True:
            word = self.word()
            if word not in self.vocab.common:
                return word

    def title(self) -> str:
        words = [self.rng.choice(self.topic_words)]
        words += [self.content_word() for _ in range(self.rng.randint(1, 3))]
        self.rng.shuffle(words)
        return " ".join(w.capitalize() for w in words)

    def paragraph(self) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(2, 5)))

    def list_block(self) -> str:
        marker = self.rng.choice(("-", "*", "1."))
        items = []
        for i in range(self.rng.randint(3, 6)):
            text = " ".join(self.words(self.rng.randint(3, 9)))
            prefix = f"{i + 1}." if marker == "1." else marker
            if marker == "-" and self.rng.random() < 0.2:
                prefix += " [x]" if self.rng.random() < 0.5 else " [ ]"
            items.append(f"{prefix} {text}")
        return "\n".join(items)

    def code_block(self) -> str:
        lang = self.rng.choice(CODE_LANGS)
        lines = []
        for _ in range(self.rng.randint(2, 7)):
            a, b = self.rng.choice(self.topic_words), self.word().strip(",")
            kind = self.rng.random()
            if lang == "bash" or kind < 0.2:
                lines.append(f"{self.rng.choice(CODE_COMMANDS)} {a}/{b}_{self.rng.randint(1, 99)}")
            elif lang == "python":
                lines.append(f"def {a}_{b}(path, limit={self.rng.randint(1, 500)}):  # {self.word()}")
            elif lang in ("json", "toml", "yaml"):
                lines.append(f'"{a}_{b}": {self.rng.randint(0, 10_000)},')
            elif lang == "sql":
                lines.append(f"SELECT {a}, {b} FROM {a}s WHERE {b} > {self.rng.randint(0, 99)};")
            else:
                lines.append(" ".join(self.words(6)))
        return f"```{lang}\n" + "\n".join(lines) + "\n```"

    def heading(self, level: int) -> str:
        return "#" * level + " " + self.title()


class _ChineseWriter:
    def __init__(self, rng: random.Random, vocab: Vocabulary, topics: list[str]) -> None:
        self.rng = rng
        self.vocab = vocab
        self.topic_words = [w for t in topics for w in vocab.chinese_topics[t]]

    def word(self) -> str:
        if self.rng.random() < 0.35:
            return self.rng.choice(self.topic_words)
        return self.rng.choices(self.vocab.chinese, cum_weights=self.vocab.chinese_cum)[0]

    def sentence(self) -> str:
        parts: list[str] = []
        for i in range(self.rng.randint(5, 12)):
            if i and self.rng.random() < 0.15:
                parts.append("，")
            if self.rng.random() < 0.04:
                parts.append(f" {self.rng.choice(CHINESE_INLINE_LATIN)} ")
            parts.append(self.word())
            if self.rng.random() < 0.3:
                parts.append(self.rng.choice(CHINESE_PARTICLES))
        return "".join(parts).strip().replace(" ，", "，") + self.rng.choice("。。。！？")

    def title(self) -> str:
        return "".join(self.rng.choice(self.topic_words) for _ in range(self.rng.randint(2, 3)))

    def paragraph(self) -> str:
        return "".join(self.sentence() for _ in range(self.rng.randint(2, 5)))

    def list_block(self) -> str:
        items = []
        for _ in range(self.rng.randint(3, 6)):
            items.append("- " + "".join(self.word() for _ in range(self.rng.randint(2, 5))))
        return "\n".join(items)

    def heading(self, level: int) -> str:
        return "#" * level + " " + self.title()


def _front_matter(rng: random.Random, title: str, tags: list[str]) -> str:
    date = f"20{rng.randint(18, 24)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return f'---\ntitle: "{title}"\ndate: {date}\ntags: [{", ".join(tags)}]\n---\n\n'


def _document(rng: random.Random, vocab: Vocabulary, chinese: bool) -> tuple[str, str]:
    """(title, Markdown text) of one generated file."""
    target = rng.randint(MIN_BYTES, MAX_BYTES)
    if chinese:
        topics = rng.sample(sorted(vocab.chinese_topics), 2)
        zh = _ChineseWriter(rng, vocab, topics)
        # Chinese notes often carry English code; the code blocks come from an English writer.
        en = _EnglishWriter(rng, vocab, [rng.choice(sorted(vocab.topics))])
        title = zh.title()
        heading, paragraph, list_block = zh.heading, zh.paragraph, zh.list_block
        tags = topics
    else:
        topics = rng.sample(sorted(vocab.topics), 2)
        en = _EnglishWriter(rng, vocab, topics)
        title = en.title()
        heading, paragraph, list_block = en.heading, en.paragraph, en.list_block
        tags = topics
    blocks: list[str] = []
    if rng.random() < 0.4:
        blocks.append(_front_matter(rng, title, tags).rstrip("\n"))
        if rng.random() < 0.5:
            blocks.append(paragraph())
    else:
        blocks.append(f"# {title}")
    size = sum(len(b.encode("utf-8")) + 2 for b in blocks)
    while size < target:
        r = rng.random()
        if r < 0.12:
            block = heading(rng.choice((2, 2, 3)))
        elif r < 0.22:
            block = list_block()
        elif r < 0.28:
            block = en.code_block()
        elif r < 0.31:
            block = "> " + paragraph()
        else:
            block = paragraph()
        blocks.append(block)
        size += len(block.encode("utf-8")) + 2
    return title, "\n\n".join(blocks) + "\n"


def _slug(title: str, chinese: bool, rng: random.Random) -> str:
    if chinese:
        # Half the Chinese files get Chinese names, to exercise segmentation of paths too.
        return title[:6] if rng.random() < 0.5 else "zh-note"
    words = [w.lower() for w in title.split() if w.isalnum()][:4]
    return "-".join(words) or "note"


def generate_files(seed: int, files: int) -> Iterator[tuple[str, str]]:
    """(relative path, text) for every file, in order. Pure: no I/O."""
    vocab = Vocabulary.build()
    per_folder = max(1, -(-files // (AREAS * FOLDERS_PER_AREA)))
    area_names = sorted(vocab.topics)[:AREAS]
    for i in range(files):
        rng = random.Random(f"tansaku-corpus:{GENERATOR_VERSION}:{seed}:{i}")
        chinese = rng.random() < CHINESE_FRACTION
        title, text = _document(rng, vocab, chinese)
        folder = i // per_folder
        area, sub = divmod(folder, FOLDERS_PER_AREA)
        area_name = area_names[area % len(area_names)]
        rel = f"{area:02d}-{area_name}/{sub:02d}-notes/{i:05d}-{_slug(title, chinese, rng)}.md"
        yield rel, text


# --- writing -----------------------------------------------------------------------------------


def read_stamp(out: Path) -> dict[str, object] | None:
    try:
        data = json.loads((out / STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _matches(stamp: dict[str, object] | None, seed: int, files: int) -> bool:
    return (
        stamp is not None
        and stamp.get("generator_version") == GENERATOR_VERSION
        and stamp.get("seed") == seed
        and stamp.get("files") == files
    )


def ensure_corpus(
    out: Path,
    seed: int = DEFAULT_SEED,
    files: int = DEFAULT_FILES,
    *,
    force: bool = False,
    quiet: bool = False,
) -> dict[str, object]:
    """Generate the corpus into ``out`` unless a matching stamp says it is already there."""
    out = out.resolve()
    stamp = read_stamp(out)
    if not force and _matches(stamp, seed, files):
        assert stamp is not None
        if not quiet:
            print(f"corpus up to date: {out} (seed {seed}, {files} files, sha256 {stamp.get('sha256')})")
        return stamp
    if out.exists() and any(out.iterdir()):
        if stamp is None:
            raise SystemExit(
                f"{out} is not empty and has no {STAMP_NAME}: refusing to overwrite a folder this "
                "script did not create"
            )
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    digest = hashlib.sha256()
    total = count = chinese = 0
    for rel, text in generate_files(seed, files):
        data = text.encode("utf-8")
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        digest.update(rel.encode("utf-8") + b"\0" + data + b"\0")
        total += len(data)
        count += 1
        chinese += not text.isascii()
    stamp = {
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "files": count,
        "bytes": total,
        "chinese_files": chinese,
        "sha256": digest.hexdigest(),
    }
    tmp = out / (STAMP_NAME + ".tmp")
    tmp.write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, out / STAMP_NAME)
    if not quiet:
        print(
            f"generated {count} files, {total / 1e6:.1f} MB ({chinese} with Chinese text) in {out} "
            f"in {time.perf_counter() - started:.1f} s; sha256 {stamp['sha256']}"
        )
    return stamp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT, help=f"default: {DEFAULT_OUT}")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--files", type=int, default=DEFAULT_FILES)
    parser.add_argument("--force", action="store_true", help="regenerate even when the stamp matches")
    args = parser.parse_args(argv)
    ensure_corpus(args.out, args.seed, args.files, force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
